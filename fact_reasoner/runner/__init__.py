"""The dataset run in parts: the run loop (:mod:`.loop`), the jobs the commands run
(:mod:`.jobs`: a pipeline over records, the RAG metrics over samples, side by side), the record
service a server uses (:mod:`.service`) and the UAI export (:mod:`.export`).

A command describes its run as a :class:`DatasetJob` and hands it to :func:`run_dataset`::

    from fact_reasoner.runner import AssessDataset, run_dataset
    report = run_dataset(AssessDataset(assessor=assessor, input_file=Path("answers.jsonl"), output_dir="out"))

These names are the documented API; each is defined in the module named above.
"""

from .export import ExportReport, export_models
from .jobs import AssessDataset, AssessJob, RagasDataset
from .loop import DEFAULT_OUTPUT_DIR, DatasetJob, RunReport, default_output_file, run_dataset
from .service import RecordService

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "AssessDataset",
    "AssessJob",
    "DatasetJob",
    "ExportReport",
    "RagasDataset",
    "RecordService",
    "RunReport",
    "default_output_file",
    "export_models",
    "run_dataset",
]
