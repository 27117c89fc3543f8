"""The ground floor: devices, dtypes, the backend choice (NumPy or torch), the compile
cache (``_devices``) and the array namespace the engine is written against (``_arrays``).

Nothing here imports another stage of constropt; every stage above may import it.
"""
