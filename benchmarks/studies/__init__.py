"""What the quality studies share: running their training runs, and their reports.

`runner` runs a study (a `Study`: its program, flags, plan of training
runs and report), each run in its own process and directory; `seeded` is
the report of the seeded fine-tuning studies (`projection_study`,
`bert_study`, `main_job_study`); `quality_report` that of `quality`.
"""
