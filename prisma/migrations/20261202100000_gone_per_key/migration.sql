-- A 410 Gone marks a URL for the key whose callback got it, not for every tenant:
-- another key's callbacks to the same URL are still sent (issue: one tenant's 410
-- failed another's callbacks, which could neither see nor clear the mark). Every
-- mark so far was recorded with its key; one without (none are written so) is
-- dropped, as it cannot be told whose it was.
DELETE FROM "gone_endpoint" WHERE "api_key_id" IS NULL;
ALTER TABLE "gone_endpoint" DROP CONSTRAINT "gone_endpoint_pkey";
ALTER TABLE "gone_endpoint" ALTER COLUMN "api_key_id" SET NOT NULL;
ALTER TABLE "gone_endpoint" ADD CONSTRAINT "gone_endpoint_pkey" PRIMARY KEY ("api_key_id", "url");
