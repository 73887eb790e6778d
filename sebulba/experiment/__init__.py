"""What every experiment entry point shares: a run directory with its flags (`RunDir`), metrics
to CSV and TensorBoard (`MetricsWriter`), a live progress line (`ProgressBar`), learning-curve
PNGs (`plot_learning_curve`, `plot_curves`), `Outputs`, which combines them, and a profiler trace
of a window of the run (`ProfileWindow`, `profiled`):

    run = RunDir.create(FLAGS.logdir, "impala", FLAGS.env, FLAGS.seed, FLAGS.flag_values_dict())
    with Outputs(run, total_env_steps=FLAGS.total_env_steps) as outputs:
        loop.run(max_env_steps=FLAGS.total_env_steps, report=outputs)
"""

from sebulba.experiment.curves import plot_curves, plot_learning_curve
from sebulba.experiment.outputs import MetricsWriter, Outputs
from sebulba.experiment.profiling import ProfileWindow, profiled
from sebulba.experiment.progress import ProgressBar
from sebulba.experiment.run_dir import RunDir

__all__ = ["MetricsWriter", "Outputs", "ProfileWindow", "ProgressBar", "RunDir", "plot_curves", "plot_learning_curve",
           "profiled"]
