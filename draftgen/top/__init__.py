"""`draftgen top`: a live view of a running job. Sources (I/O) → snapshots → a view (pure,
model.py) → rich renderables (render.py); cli.py drives the loop and the keys."""
