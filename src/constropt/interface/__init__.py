"""The edge the user touches beside the library calls: the demo, the quick benchmark
table and plots (the CLI is ``constropt.cli`` and problem files ``constropt.files``)."""
