import { Injectable } from '@nestjs/common';
import { ApiDatabase } from '../database/api-database.js';
import { Prisma } from '../generated/prisma/client.js';

export interface OperatorEndpointRow {
  apiKeyId: string;
  receiverId: string;
  /** null: all types */
  eventTypes: string[] | null;
  host: string;
  createdAt: Date;
  updatedAt: Date;
}

const RETURNING = Prisma.sql`RETURNING api_key_id AS "apiKeyId", receiver_id AS "receiverId", event_types AS "eventTypes", host,
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/** The operator_endpoint row of a key: which receiver row is its endpoint (OPERATOR_RECEIVER), and which types it takes. */
@Injectable()
export class OperatorEndpointRepository {
  constructor(private readonly db: ApiDatabase) {}

  async findEndpoint(apiKeyId: string): Promise<OperatorEndpointRow | null> {
    const [row] = await this.db.query<OperatorEndpointRow>(Prisma.sql`
      SELECT api_key_id AS "apiKeyId", receiver_id AS "receiverId", event_types AS "eventTypes", host,
             created_at AS "createdAt", updated_at AS "updatedAt"
      FROM operator_endpoint WHERE api_key_id = ${apiKeyId}::uuid`);
    return row ?? null;
  }

  /** Creates or updates it (one statement, operator_endpoint_pkey); `eventTypes` undefined keeps them (all, when new), null means all. */
  async upsertEndpoint(apiKeyId: string, receiverId: string, host: string, eventTypes: string[] | null | undefined): Promise<OperatorEndpointRow> {
    const [row] = await this.db.query<OperatorEndpointRow>(Prisma.sql`
      INSERT INTO operator_endpoint (api_key_id, receiver_id, host, event_types)
      VALUES (${apiKeyId}::uuid, ${receiverId}::uuid, ${host}, ${eventTypes ?? null}::text[])
      ON CONFLICT (api_key_id) DO UPDATE
        SET receiver_id = EXCLUDED.receiver_id, host = EXCLUDED.host, updated_at = now(),
            event_types = CASE WHEN ${eventTypes === undefined}::boolean THEN operator_endpoint.event_types ELSE EXCLUDED.event_types END
      ${RETURNING}`);
    return row;
  }

  /** Deletes it at once: no event is stored for the key from its commit on (its receiver row goes by the receiver delete task). */
  async deleteEndpoint(apiKeyId: string): Promise<boolean> {
    return (await this.db.execute(Prisma.sql`DELETE FROM operator_endpoint WHERE api_key_id = ${apiKeyId}::uuid`)) > 0;
  }
}
