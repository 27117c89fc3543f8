"""Local solvers on exact derivatives: SLSQP through the scipy bridge (``_polish``) and
the batched Newton steps of ``solve_batch`` (``_newton``).  Used by the finishing path,
by the certificate and by the batch's local-first answers.
"""
