-- Values too large to stay in a row (a row over about 2 kB: a tool result, a file read,
-- a long reply) are compressed by Postgres, with pglz unless a column says otherwise.
-- lz4 compresses and decompresses several times faster for about the same size: an
-- import of 100,000 Claude Code messages whose results are about 2 kB took 23% less of
-- Postgres's CPU with it (interop's BenchmarkImportLargeSession, pg-cpu-s/op), and every
-- read of a compressed value decompresses it. Values stored before keep pglz until they
-- are written again; Postgres reads both. Postgres must be built with lz4 (the PGDG,
-- Debian, Ubuntu, Red Hat and Docker packages are; pg_config --configure lists
-- --with-lz4), or this migration fails naming it.
ALTER TABLE messages
    ALTER COLUMN content SET COMPRESSION lz4,
    ALTER COLUMN payload SET COMPRESSION lz4,
    ALTER COLUMN tool_calls SET COMPRESSION lz4,
    ALTER COLUMN tool_results SET COMPRESSION lz4,
    ALTER COLUMN provenance SET COMPRESSION lz4;
