"""The statistics the seeded studies share."""

import statistics

import pytest

from benchmarks import outputs
from benchmarks.studies import seeded


def test_the_t_quantiles_are_student_s():
    # scipy comes with the dev extra (JAX depends on it); the studies themselves do not need it.
    from scipy import stats

    for degrees, quantile in enumerate(seeded.T_975, start=1):
        assert quantile == pytest.approx(stats.t.ppf(0.975, degrees), abs=5e-4), degrees
    # Beyond the table, the expansion: the 20-seed study's t(19) is 2.093, not 1.96.
    for degrees in range(len(seeded.T_975) + 1, 500):
        assert seeded.t_975(degrees) == pytest.approx(stats.t.ppf(0.975, degrees),
                                                      abs=2e-4), degrees


def test_a_paired_difference_is_its_mean_and_95_percent_interval():
    # The 4-epoch BBC News runs of mean pooling at k = 64 against MiniLM, seed by seed.
    differences = [96.4 - 97.3, 96.9 - 98.2, 97.7 - 97.7]
    half = 4.303 * statistics.stdev(differences) / 3 ** 0.5
    assert half == pytest.approx(1.66, abs=0.01)
    assert seeded.paired_difference(differences) == "-0.7 [-2.4, +0.9]"
    # One seed: no interval. Identical differences: no width.
    assert seeded.paired_difference([-0.9]) == "-0.9"
    assert seeded.paired_difference([1.0, 1.0, 1.0]) == "+1.0 [+1.0, +1.0]"
    # Student's t at any number of seeds: t(11) = 2.201.
    many = [0.0, 2.0] * 6
    half = 2.201 * statistics.stdev(many) / 12 ** 0.5
    assert seeded.paired_difference(many) == f"+1.0 [{1 - half:+.1f}, {1 + half:+.1f}]"


def test_the_difference_pairs_runs_of_the_same_seed():
    def row(model, seed, accuracy):
        return dict(dataset="bbc_news", model=model, seed=seed, status="finished",
                    test_accuracy=accuracy)

    # The seeds' accuracies move together: paired, the difference is certain, though each
    # model's spread over the seeds is 10 points.
    rows = [row("transformer", s, a) for s, a in enumerate([0.80, 0.90, 0.70])]
    rows += [row("mean-k64", s, a - 0.01) for s, a in enumerate([0.80, 0.90, 0.70])]
    table = seeded.accuracy_table(rows)
    assert table["bbc_news", "transformer"] == ["80.0 ± 10.0 [80.0, 90.0, 70.0]", "-"]
    assert table["bbc_news", "mean-k64"] == ["79.0 ± 10.0 [79.0, 89.0, 69.0]",
                                             "-1.0 [-1.0, -1.0]"]


def test_many_seeds_are_summarised_by_their_number_and_range():
    five = [97.0, 98.0, 96.0, 97.5, 96.5]
    assert seeded.spread_text(statistics.mean(five), statistics.stdev(five), five) == \
        "97.0 ± 0.8 [97.0, 98.0, 96.0, 97.5, 96.5]"
    twenty = [96.9 + 0.1 * i for i in range(19)] + [95.0]
    assert seeded.spread_text(statistics.mean(twenty), statistics.stdev(twenty), twenty) == (
        f"{statistics.mean(twenty):.1f} ± {statistics.stdev(twenty):.1f} [20 seeds, 95.0-98.7]")


def test_the_seeds_needed_follow_from_the_spread_of_the_paired_differences():
    # t(17) / sqrt(18) * 1.0 = 0.497, t(16) / sqrt(17) = 0.514: 18 pairs for ±0.5 at sd 1.
    assert seeded.pairs_for(1.0, 0.5) == 18
    assert seeded.pairs_for(0.6, 0.5) == 9
    assert seeded.pairs_for(0.0, 0.5) == 2

    def row(model, seed, accuracy):
        return dict(dataset="bbc_news", model=model, seed=seed, status="finished",
                    test_accuracy=accuracy)

    rows = [row("transformer", s, 0.97) for s in range(4)]
    rows += [row("linear-k128", s, 0.97 + d) for s, d in enumerate([-0.01, 0.0, 0.01])]
    # Three pairs: differences -1, 0, +1 points, standard deviation 1.
    assert seeded.planning_lines(rows) == [
        "", "Seeds needed, at the spread so far:", "",
        "- bbc news, linear-k128: the paired differences spread by 1.00 points (standard "
        "deviation over 3 seeds), so 18 pairs give a 95% interval of ±0.5 points."]
    # Two pairs say too little about the spread.
    assert seeded.planning_lines(rows[:6]) == []


def test_the_figure_shows_the_paired_differences_once_two_seeds_pair():
    def row(model, seed, accuracy):
        return dict(dataset="bbc_news", model=model, seed=seed, status="finished",
                    test_accuracy=accuracy)

    rows = [row("transformer", s, a) for s, a in enumerate([0.98, 0.97, 0.99])]
    rows += [row("mean-k64", s, a) for s, a in enumerate([0.97, 0.97, 0.96])]
    # linear-k128's seed 3 has no Transformer run to pair with.
    rows += [row("linear-k128", s, a) for s, a in [(0, 0.975), (1, 0.96), (3, 0.90)]]
    figure = seeded.figure(rows, title=lambda dataset: dataset)
    accuracy, paired = figure.axes
    assert [tick.get_text() for tick in paired.get_xticklabels()] == ["mean-k64", "linear-k128"]
    seeds, means = paired.collections[0::2], paired.collections[1::2]
    expected = {0: [-1.0, 0.0, -3.0], 1: [-0.5, -1.0]}
    for position, values in expected.items():
        points = seeds[position].get_offsets()
        assert points[:, 0].tolist() == [position] * len(values)
        assert points[:, 1].tolist() == pytest.approx(values)
        # The error bar spans the mean's 95% t-interval.
        mean, half = seeded.interval(values)
        (segment,) = means[position].get_segments()
        assert segment[:, 1].tolist() == pytest.approx([mean - half, mean + half])
    assert sorted(line.get_ydata()[0] for line in paired.get_lines()
                  if len(line.get_ydata()) == 2 and line.get_xdata()[0] == 0) == [-1, 0]
    # Every run's accuracy is in the first row.
    assert sum(len(c.get_offsets()) for c in accuracy.collections[0::2]) == 9

    # One seed per model: nothing to pair yet, one row.
    unpaired = seeded.figure(rows[:1] + rows[3:4], title=str)
    assert len(unpaired.axes) == 1
    # The caller owns the figures (`plot` closes its own when it saves).
    plt = outputs.pyplot()
    plt.close(figure)
    plt.close(unpaired)


def test_the_majority_class_is_a_line_within_the_seeds_range_and_in_the_title_outside_it():
    def rows(majority):
        return [dict(dataset="bbc_news", model=model, seed=seed, status="finished",
                     test_accuracy=accuracy, majority_accuracy=majority)
                for model, seed, accuracy in [("transformer", 0, 0.97), ("transformer", 1, 0.5),
                                              ("mean-k64", 0, 0.96)]]

    plt = outputs.pyplot()
    # At 24.5% it lies below every seed: in the title, and the axis spans the seeds only.
    figure = seeded.figure(rows("0.245"), title=str)
    axes = figure.axes[0]
    assert axes.get_title() == "bbc_news\nmajority class 24.5%, off the axis"
    assert axes.get_legend() is None and axes.get_ylim()[0] > 24.5
    plt.close(figure)
    # At 60% it lies among them: a line.
    figure = seeded.figure(rows(0.6), title=str)
    axes = figure.axes[0]
    assert axes.get_title() == "bbc_news"
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["majority class"]
    assert any(line.get_ydata()[0] == 60 for line in axes.get_lines())
    plt.close(figure)


def test_the_footer_names_each_machine_with_its_runs_and_matmul_rates():
    def row(machine=None, rate=None, status="finished"):
        return dict(dataset="bbc_news", model="transformer", seed=0, status=status,
                    machine=machine, matmul_gflops_per_s=rate)

    rows = [row("2 CPU cores (A)", 160.2), row("2 CPU cores (A)", 171.6),
            row("2 CPU cores (B)", 90.0), row("2 CPU cores (B)", None), row(),
            row("2 CPU cores (C)", 50.0, status="unfinished")]
    assert seeded.machine_lines(rows) == [
        "", "Machines:", "",
        "- 2 CPU cores (A): 2 runs, a 2048^3 float32 matmul at 160-172 GFLOP/s before each.",
        "- 2 CPU cores (B): 2 runs, a 2048^3 float32 matmul at 90 GFLOP/s before each.",
        "- not recorded: 1 run (from before machines were).",
    ]
    # Studies from before machines were recorded say nothing of them.
    assert seeded.machine_lines([row(), row()]) == []
    assert seeded.footer([row()]) == []
