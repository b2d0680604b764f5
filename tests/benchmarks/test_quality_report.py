"""The quality study's report: the targets checked against the Transformer."""

from benchmarks import quality
from benchmarks import quality_report


def _row(stage, attention, k=None, dataset="news_articles", start="random", **results):
    sharing = "layerwise" if attention == "linformer" else None
    return dict(stage=stage, attention=attention, projected_dim=k, sharing=sharing,
                model=quality.model_name(attention, k, sharing), dataset=dataset,
                start=start, status="finished", **results)


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
    assert "+4.0%" in verdicts[0] and "**met**" in verdicts[0]
    assert "-1.5 points" in verdicts[1] and "**missed**" in verdicts[1]
