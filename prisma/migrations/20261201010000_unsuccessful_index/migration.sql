-- A key's failed and cancelled callbacks in id order: `GET /v1/callbacks?status=failed`
-- (or `cancelled`), the list people fixing an endpoint ask for. With a million
-- succeeded rows of which one in a thousand failed, its first page walked the primary
-- key and passed over ~100,000 rows (136 ms), and each later page as many again;
-- through this index a page reads its own rows. Only a row that ends failed or
-- cancelled enters it, so a callback that succeeds costs nothing more.
CREATE INDEX "callback_unsuccessful_idx" ON "callback"("api_key_id", "status", "id") WHERE "status" IN ('failed', 'cancelled');
