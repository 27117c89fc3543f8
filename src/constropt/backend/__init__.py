"""The ground floor: devices, dtypes and the backend choice (NumPy or torch,
``_devices``), the compile cache (``_compile``), the array namespace the engine is
written against (``_arrays``), and the garbage collector's pause while a large
structure is built (``_bulk``).

Nothing here imports another stage of constropt; every stage above may import it.
"""
