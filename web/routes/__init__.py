"""The HTTP routes, one module per group of pages and endpoints: a leaf layer.

A route module imports no other route module (tests/test_import_graph.py); what several share lives in `web/`:
analysis records in web/analyses.py, the admin gate in web/admin.py, uploads and job progress in web/batches.py,
what a reader is shown in web/shown.py. Most route modules have a `web/` namesake; the others serve: admin.py,
sites (web/sites.py) and their deferral (web/deferral.py); account.py, accounts and sessions (web/auth.py);
demo.py, the examples and the demo forum (web/examples.py, web/forum.py).
"""
