"""The measured numbers the about-runs page quotes: the cpu batch as a whole, one registered
`quantity` each."""

from __future__ import annotations

from mlmlib.runs.page_quantity import hours, minutes, quantity, span

# ----------------------------------------------------------------------------------------------
# The cpu batch as a whole (every record of the profile)


@quantity("cpu_runs", "*", "one record per run", "how many runs the cpu profile's records hold")
def _(records):
    return str(len(records))


@quantity("cpu_core_time", "*", "wall_time_s", "the cpu runs' wall times added up")
def _(records):
    return f"{records['wall_time_s'].sum():,.0f} s ({hours(records['wall_time_s'].sum())})"


@quantity("cpu_two_cores", "*", "wall_time_s",
          "the batch's time on two cores: its core time plus B2's, whose run leaves a core idle, "
          "halved")
def _(records):
    alone = records[records["notebook"] == "B2_true_negatives_overhead"]["wall_time_s"].sum()
    return hours((records["wall_time_s"].sum() + alone) / 2)


@quantity("cpu_commits", "*", "git_sha", "the commits whose code made the cpu records")
def _(records):
    return ", ".join(sorted(records["git_sha"].str[:7].unique()))


@quantity("cpu_longest", "*", "wall_time_s", "the notebooks with the longest runs, time per run")
def _(records):
    times = records.groupby("notebook")["wall_time_s"].agg(["min", "max", "count"])
    times = times.sort_values("max", ascending=False).head(7)
    runs = [f"{nb} {span(minutes(t['min']), minutes(t['max']))}"
            + (f" ({int(t['count'])} runs)" if t["count"] > 1 else "") for nb, t in times.iterrows()]
    return "; ".join(runs)


