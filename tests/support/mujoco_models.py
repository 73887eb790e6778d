"""Gymnasium's hopper.xml made cheap to draw: Mesa's software EGL (a host without a GPU) takes
~0.2-0.3 s per frame of the original, mostly its 4096x4096 shadow map and 4x multisampling; with
a 256 shadow map, no multisampling and a floor that reflects nothing, ~0.03 s. The physics is the
original's, unless `gravity` is given."""

from __future__ import annotations

from pathlib import Path


def cheap_hopper(directory: Path, gravity: str | None = None) -> str:
    """The path of such a hopper.xml written into directory; gravity e.g. "3 0 0" (default: MuJoCo's)."""
    from envs.mujoco.backend import xml_path

    xml = Path(xml_path("hopper.xml")).read_text()
    edits = [('<map znear="0.02"/>', '<map znear="0.02"/><quality shadowsize="256" offsamples="0"/>'),
             ('name="MatPlane" reflectance="0.5"', 'name="MatPlane" reflectance="0"')]
    if gravity is not None:
        edits.append(('timestep="0.002"/>', f'timestep="0.002" gravity="{gravity}"/>'))
    for old, new in edits:
        assert old in xml, old
        xml = xml.replace(old, new)
    path = Path(directory) / f"hopper_cheap{'_g' + gravity.replace(' ', '_') if gravity else ''}.xml"
    path.write_text(xml)
    return str(path)
