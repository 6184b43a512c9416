"""The store on PostgreSQL with pgvector, in progress (docs/postgresql.md): the store URL setting, and the
core schema a project gets on a server.  psycopg is imported only by the modules that talk to a server."""
