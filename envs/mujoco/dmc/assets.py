"""dm_control's suite models, read from the installed `dm_control` package's files.

The suite's XML (and the common materials, skybox and visual files they include) are dm_control's
own: the `dmc` extra installs the package, and these functions read its files without importing
it (its Python layer pins MuJoCo versions; the models are plain MJCF). Cartpole's two- and
three-pole variants are built from cartpole.xml as dm_control's `cartpole._make_model` builds them.
"""

from __future__ import annotations

import functools
import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

INSTALL_HINT = "dm_control's suite (DMC ids) needs its models: pip install -e '.[dmc]' (the dm_control package)"
COMMON = ("materials.xml", "skybox.xml", "visual.xml")


def dm_control_available() -> bool:
    return importlib.util.find_spec("dm_control") is not None


@functools.cache
def suite_dir() -> Path:
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(INSTALL_HINT)
    path = Path(next(iter(spec.submodule_search_locations))) / "suite"
    if not (path / "common" / "visual.xml").exists():
        raise ImportError(f"{INSTALL_HINT}; the installed dm_control has no suite models in {path}")
    return path


@functools.cache
def assets() -> dict[str, bytes]:
    """The files the suite's models include, by the names they include them as."""
    return {f"./common/{name}": (suite_dir() / "common" / name).read_bytes() for name in COMMON}


def read_model(filename: str) -> str:
    return (suite_dir() / filename).read_text()


def remove(root: ET.Element, *elements: ET.Element | tuple[str, str]) -> None:
    """Removes elements from the model tree `root`: each an element, or a (tag, name) to find."""
    parents = {child: parent for parent in root.iter() for child in parent}
    for element in elements:
        if isinstance(element, tuple):
            tag, name = element
            element = root.find(f".//{tag}[@name='{name}']")
        parents[element].remove(element)


def cartpole_xml(num_poles: int) -> str:
    """cartpole.xml with a chain of num_poles poles, the floor moved down and the cameras back."""
    xml = read_model("cartpole.xml")
    if num_poles == 1:
        return xml
    root = ET.fromstring(xml)
    parent = root.find("./worldbody/body/body")  # the first pole
    for index in range(2, num_poles + 1):
        child = ET.Element("body", name=f"pole_{index}", pos="0 0 1", childclass="pole")
        ET.SubElement(child, "joint", name=f"hinge_{index}")
        ET.SubElement(child, "geom", name=f"pole_{index}")
        parent.append(child)
        parent = child
    root.find("./worldbody/geom").set("pos", f"0 0 {1 - num_poles - .05}")
    cameras = root.findall("./worldbody/camera")
    cameras[0].set("pos", f"0 {-1 - 2 * num_poles} 1")
    cameras[1].set("pos", f"0 {-2 * num_poles} 2")
    return ET.tostring(root, encoding="unicode")


@functools.cache
def dog_assets() -> dict[str, bytes]:
    """The dog's meshes (dm_control's suite/dog_assets), by file name, with the common files."""
    folder = suite_dir() / "dog_assets"
    return {**assets(), **{f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.is_file()}}
