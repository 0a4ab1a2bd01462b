"""flowlab's profiler: step traces, their Chrome/Perfetto export, Gantt plots and
summaries (the "tools that see a step" layer of docs/architecture.md; the design
notes are docs/notes/profiler.md).

    md = fl.RunMetadata()
    sess.run(y, options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=md)
    trace = fl.profiler.Trace.from_run_metadata(md)
    trace.to_chrome("step.json"); trace.plot(); trace.summary()

    with fl.profile(sess) as prof:      # many steps
        ...
    prof.summary()
"""

from flowlab.profiler.chrome import chrome_trace, write_chrome
from flowlab.profiler.collect import Profile, profile
from flowlab.profiler.html import timeline_svg
from flowlab.profiler.summary import Summary, Table, critical_path, summarize
from flowlab.profiler.trace import MemorySample, OpRecord, OutputRecord, Trace, TransferRecord

__all__ = [
    "MemorySample",
    "OpRecord",
    "OutputRecord",
    "Profile",
    "Summary",
    "Table",
    "Trace",
    "TransferRecord",
    "chrome_trace",
    "critical_path",
    "profile",
    "summarize",
    "timeline_svg",
    "write_chrome",
]
