"""The ground floor: devices, dtypes and the backend choice (NumPy or torch,
``_devices``), the compile cache (``_compile``) and the array namespace the engine is
written against (``_arrays``).

Nothing here imports another stage of constropt; every stage above may import it.
"""
