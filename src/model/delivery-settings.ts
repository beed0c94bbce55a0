import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsInt, IsOptional, Max, Min } from 'class-validator';

/** Hard ceilings of the delivery settings; the configured limits (MAX_*, HTTP_MAX_TIMEOUT_MS) are checked by the service. */
const MAX_TIMEOUT_MS = 3_600_000;
const MAX_RETRY_DELAY_MS = 7 * 24 * 3600 * 1000;

/**
 * The delivery settings a callback, a batch's defaults and a receiver share, each one
 * decorator. Listed in the order they would stand above the property, applied
 * nearest-first: class-validator reports the first failure from the property outwards,
 * so the type check is the nearest and `"abc"` says "must be an integer", not "must not
 * be greater".
 */
const field = (...outermostFirst: PropertyDecorator[]) => applyDecorators(...outermostFirst.reverse());

export const TimeoutMsSetting = (description = 'Per-call timeout in ms') =>
  field(ApiPropertyOptional({ description }), IsOptional(), Max(MAX_TIMEOUT_MS), Min(1), IsInt());

export const MaxAttemptsSetting = (description = 'Attempts in all, first included') =>
  field(ApiPropertyOptional({ description }), IsOptional(), Max(100), Min(1), IsInt());

export const RetryDelaysMsSetting = () =>
  field(
    ApiPropertyOptional({ type: [Number], description: 'Delays before attempt 2, 3, … in ms; the last repeats' }),
    IsOptional(),
    Max(MAX_RETRY_DELAY_MS, { each: true }),
    Min(0, { each: true }),
    IsInt({ each: true }),
    ArrayMaxSize(50),
    IsArray(),
  );
