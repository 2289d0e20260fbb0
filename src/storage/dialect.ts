/** The two stores: the embedded SQLite file, or a shared PostgreSQL. */
export type Dialect = 'sqlite' | 'postgres';
