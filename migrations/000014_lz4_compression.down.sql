ALTER TABLE messages
    ALTER COLUMN content SET COMPRESSION default,
    ALTER COLUMN payload SET COMPRESSION default,
    ALTER COLUMN tool_calls SET COMPRESSION default,
    ALTER COLUMN tool_results SET COMPRESSION default,
    ALTER COLUMN provenance SET COMPRESSION default;
