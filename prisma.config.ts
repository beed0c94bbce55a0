import { defineConfig } from 'prisma/config';

// The service applies prisma/migrations itself (src/database/migrator.ts); this file
// only tells the Prisma CLI where the schema and migrations live.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/callbacks' },
});
