import postgres from "postgres";

/**
 * Every row of every table outside Postgres's own schemas, one string per row as Postgres prints it
 * (`<schema>.<table>: <row text>`, bytea as hex), as pg_dump's data section holds the data. Tests of
 * encryption at rest search it for plaintext. pg_dump itself is not used: the machine's client (15)
 * refuses to dump the embedded server (18).
 */
export async function databaseRows(url: string): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const tables = await sql<{ schema: string; name: string }[]>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
    const rows: string[] = [];
    for (const { schema, name } of tables) {
      const found = await sql<{ row: string }[]>`select t::text as row from ${sql(schema)}.${sql(name)} t`;
      for (const { row } of found) rows.push(`${schema}.${name}: ${row}`);
    }
    return rows;
  } finally {
    await sql.end();
  }
}
