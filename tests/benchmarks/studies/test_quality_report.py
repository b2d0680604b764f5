"""The quality study's report: the targets checked against the Transformer."""

from benchmarks import quality
from benchmarks.studies import quality_report


def _row(stage, attention, k=None, dataset="news_articles", start="random", seed=0,
         status="finished", **results):
    sharing = "layerwise" if attention == "linformer" else None
    return dict(stage=stage, attention=attention, projected_dim=k, sharing=sharing,
                model=quality.model_name(attention, k, sharing), dataset=dataset,
                start=start, seed=seed, status=status, **results)


def test_targets_are_checked_against_the_transformer():
    rows = [
        _row("pretrain", "transformer", test_perplexity=100.0),
        _row("pretrain", "linformer", 128, test_perplexity=104.0),
        _row("pretrain", "linformer", 64, test_perplexity=200.0),  # not the target's k
        _row("finetune", "transformer", dataset="bbc_news", start="scratch", test_accuracy=0.90),
        _row("finetune", "linformer", 128, dataset="bbc_news", start="scratch",
             test_accuracy=0.885),
    ]
    verdicts = quality_report.target_verdicts(rows)
    assert len(verdicts) == 2
    assert verdicts[0].endswith("in % seed by seed: +4.0 (target: at most +5%): **met**")
    assert verdicts[1].endswith("in points seed by seed: -1.5 (target: at least -1): **missed**")


def test_several_seeds_are_reported_as_mean_and_spread_and_judged_on_the_mean():
    rows = [
        _row("pretrain", "transformer", seed=0, test_perplexity=100.0, seconds=10.0,
             curve=[(50, 300.0), (100, 200.0)]),
        _row("pretrain", "transformer", seed=1, test_perplexity=102.0, seconds=30.0,
             curve=[(50, 310.0), (100, 210.0)]),
        _row("pretrain", "linformer", 128, seed=0, test_perplexity=104.0,
             unigram_test_perplexity=600.0, curve=[(50, 320.0), (100, 220.0)]),
        _row("pretrain", "linformer", 128, seed=1, status="unfinished"),
        _row("finetune", "transformer", dataset="bbc_news", start="scratch", seed=0,
             test_accuracy=0.90),
        _row("finetune", "transformer", dataset="bbc_news", start="scratch", seed=1,
             test_accuracy=0.80),
        _row("finetune", "linformer", 128, dataset="bbc_news", start="scratch", seed=0,
             test_accuracy=0.86),
        _row("finetune", "linformer", 128, dataset="bbc_news", start="scratch", seed=1,
             test_accuracy=0.82),
    ]
    table = quality_report.pretraining_table(rows)
    # Transformer: mean 101.0, sd 1.4 over the two seeds; validation columns are means.
    assert "| Transformer | 101.0 ± 1.4 [100.0, 102.0] | (reference) | 305.0 | 205.0 | - | 20 s |" \
        in table
    # One finished seed of two: its value, the ratio to the Transformer's mean, the note.
    # Against the Transformer's seed 0 (100.0), not its mean over two seeds.
    assert ("| Linformer k=128, layerwise | 104.0 (1 of 2 seeds not finished) | +4.0 (seed 0) "
            "| 320.0 | 220.0 | 600.0 |" in table)
    assert table.endswith("|")  # every row ends where its table does
    tuned, _ = quality_report.finetuning_table(rows)
    assert "| Transformer | 85.0 ± 7.1 [90.0, 80.0] |" in tuned
    # Paired by seed: -4 and +2, mean -1, standard error 3, t(1) = 12.706.
    assert "| 84.0 ± 2.8 [86.0, 82.0] (-1.0 [-39.1, +37.1]) |" in tuned
    verdicts = quality_report.target_verdicts(rows)
    # Judged on the finished seeds, and said so while one of the four runs compared is missing.
    assert verdicts[0].endswith(
        "in % seed by seed: +4.0 (seed 0) (target: at most +5%): **met so far** (1 of 4 runs "
        "not finished)")
    assert verdicts[1].endswith("seed by seed: -1.0 [-39.1, +37.1] (target: at least -1): **met**")
    assert len(verdicts) == 2
    curves = quality_report.mean_curves([r for r in rows if r["stage"] == "pretrain"])
    assert curves["transformer"] == [(50, 305.0), (100, 205.0)]


def test_perplexity_is_compared_seed_by_seed_with_its_interval():
    # The seeds' perplexities differ by 2x; the Linformer's changes are +2, +3 and +1%.
    rows = [_row("pretrain", "transformer", seed=s, test_perplexity=p)
            for s, p in enumerate([100.0, 200.0, 100.0])]
    rows += [_row("pretrain", "linformer", 128, seed=s, test_perplexity=p)
             for s, p in enumerate([102.0, 206.0, 101.0])]
    table = quality_report.pretraining_table(rows)
    # Mean +2.0, standard error 1/sqrt(3), t(2) = 4.303: +-2.5.
    assert "| +2.0 [-0.5, +4.5] |" in table
    (verdict,) = quality_report.target_verdicts(rows)
    assert verdict.endswith("+2.0 [-0.5, +4.5] (target: at most +5%): **met**")
