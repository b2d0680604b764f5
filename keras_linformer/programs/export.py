"""Export a trained model for TF Serving: raw text in, predictions out.

SOURCE is the --output-dir of `keras-linformer-finetune` (a text classifier) or of
`keras-linformer-pretrain` (a masked LM: fill-mask). It is written as a new integer version
under BASE_DIR/MODEL_NAME/ (TF Serving's layout), tokenizing in the graph, with warmup
requests; `keras-linformer-verify` then loads it the way TF Serving does. See docs/serving.md.

    keras-linformer-export [artifacts/finetune] [--model-name NAME] [--verify]
"""

import os
import sys
import time

from keras_linformer.programs import cli

DEFAULT_MODEL_NAMES = {"classifier": "linformer_classifier", "masked_lm": "linformer_masked_lm"}


def parse_args(argv=None):
    parser = cli.program_parser("export", __doc__)
    parser.add_argument("source", nargs="?", default="artifacts/finetune", metavar="SOURCE",
                        help="A fine-tuning output directory (classifier.keras, vocab.txt, "
                             "labels.txt) or a pretraining one (masked_lm.keras, vocab.txt).")
    parser.add_argument("--base-dir", type=cli.nonempty, default="saved_models",
                        help="Directory of the served models (what TF Serving mounts).")
    parser.add_argument("--model-name", type=cli.nonempty, default=None,
                        help="TF Serving's model name and its directory under --base-dir. "
                             "Default: linformer_classifier or linformer_masked_lm.")
    parser.add_argument("--version", type=cli.positive_int, default=None,
                        help="Version number to write; it must not exist yet. Default: one "
                             "more than the highest existing version (1 for a new model).")
    parser.add_argument("--sequence-length", type=cli.sequence_length, default=None,
                        help="Tokens per text, [CLS] and [SEP] included; longer texts keep "
                             "their head. Default: the training run's.")
    parser.add_argument("--max-batch-size", type=cli.positive_int, default=None,
                        help="Most texts one request may hold (at least 16); a larger batch "
                             "fails with an error naming the cap. Default: 1024.")
    parser.add_argument("--reuse-existing", action="store_true",
                        help="If the model's latest version already holds this same export "
                             "(same model, vocabulary, labels and options: its recorded "
                             "fingerprint), reuse it instead of writing a new version.")
    group = parser.add_argument_group("masked LM only")
    group.add_argument("--top-k", type=cli.positive_int, default=None,
                       help="Candidate tokens returned per [MASK] (default 5).")
    group.add_argument("--max-masks", type=cli.positive_int, default=None,
                       help="[MASK] tokens filled per text; later ones are counted in "
                            "num_masks but not filled (default 8).")
    parser.add_argument("--verify", action="store_true",
                        help="Afterwards, check the export as `keras-linformer-verify` "
                             "does; exit with status 1 if a check fails.")
    return parser, parser.parse_args(argv)


def export(args):
    """Writes the export; returns `(path, report or None)`."""
    cli.import_library("keras_linformer.export.sources")
    from keras_linformer import export as export_lib
    from keras_linformer.export import layout
    from keras_linformer.export import sources

    start = time.perf_counter()
    task = sources.task_of_directory(args.source)
    model_name = args.model_name or DEFAULT_MODEL_NAMES[task]
    given = {name: getattr(args, name) for name in ("max_batch_size", "top_k", "max_masks")
             if getattr(args, name) is not None}
    for name in ("top_k", "max_masks"):
        if task == "classifier" and name in given:  # Named by its flag (`cli.console_script`).
            raise ValueError(f"{name}: only for a masked LM, but {args.source!r} is a "
                             f"fine-tuning output (classifier). Received: {name}={given[name]}")
    before = set(export_lib.list_versions(os.path.join(args.base_dir, model_name)))
    path = getattr(export_lib, f"export_{task}")(
        args.source, base_dir=args.base_dir, model_name=model_name, version=args.version,
        sequence_length=args.sequence_length, reuse_existing=args.reuse_existing, **given)
    info = export_lib.read_export_info(path)
    done = (f"Reused {path}: it already holds this export of the {task.replace('_', ' ')} in "
            f"{args.source} (fingerprint {info['fingerprints']['export'][:12]})"
            if int(os.path.basename(path)) in before
            else f"Exported the {task.replace('_', ' ')} in {args.source} to {path}")
    cli.log(f"{done} (signatures {', '.join(info['signatures'])}; sequence length "
            f"{info['sequence_length']}; {time.perf_counter() - start:.0f} s). Serve it with:\n"
            f"  {layout.docker_command(args.base_dir, model_name)}")
    report = export_lib.verify(path, log=cli.log) if args.verify else None
    return path, report


main = cli.console_script(parse_args, export,
                          lambda result: int(result[1] is not None and not result[1].passed))


if __name__ == "__main__":
    sys.exit(main())
