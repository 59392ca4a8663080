"""The approval store contract: every test here runs against the memory, SQLite and PostgreSQL
stores (the ``store`` fixture), and the tests of what two connections on one database see
against both SQL stores (``twins``). A store's own parts (files, schemas, migrations, pools)
are tested beside it, outside this package."""
