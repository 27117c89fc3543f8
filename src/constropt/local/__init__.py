"""Local solvers on exact derivatives: SLSQP through the scipy bridge (``_polish``), the
batched Newton steps of ``solve_batch`` (``_newton``) and the batched interior-point
method with its local optimality test (``_interior``).  Used by the finishing path, by
the certificate and by the batch's local-first answers.
"""
