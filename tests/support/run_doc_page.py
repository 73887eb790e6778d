"""Run one page's ```python blocks in order in this process, as a reader pasting them one after
another into one session: one namespace, tracebacks naming the page and its Markdown lines. The
first failing block ends the run (exit status 1, `FAILED <page>:<line>` on stderr).

    python run_doc_page.py PAGE BLOCKS_JSON     # BLOCKS_JSON: [{"line": int, "code": str}, ...]
"""

import json
import sys
import traceback


def main(page: str, blocks: list[dict]) -> int:
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    for block in blocks:
        print(f"--- {page}:{block['line']}", file=sys.stderr, flush=True)
        # Leading newlines: the code's line numbers are the page's, in tracebacks
        code = compile("\n" * (block["line"] - 1) + block["code"], page, "exec")
        try:
            exec(code, namespace)
        except BaseException:  # noqa: BLE001 - SystemExit too: a block must not end the session
            traceback.print_exc()
            print(f"FAILED {page}:{block['line']}", file=sys.stderr, flush=True)
            return 1
        sys.stdout.flush()
    return 0


if __name__ == "__main__":  # a spawned child (multiprocessing) re-imports this file: run nothing then
    with open(sys.argv[2]) as f:
        sys.exit(main(sys.argv[1], json.load(f)))
