import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, Max, Min, registerDecorator } from 'class-validator';
import { IsHttpUrl } from '../../common/validators.js';
import { Verbatim } from '../../common/verbatim.js';
import { PORTAL_CAPABILITIES, type PortalCapability } from '../portal-token.policy.js';

const CSS_VAR = /^--[a-z][a-z0-9-]{0,39}$/;
/** A CSS value the page sets with style.setProperty (one property, so nothing else can be injected); no url(): the CSP would refuse its load anyway. */
const CSS_VALUE = /^(?!.*url\()[^;{}<>\\]{1,100}$/i;

/** No control character (a NUL the stored jsonb cannot hold: it was a 500) and no half of a surrogate pair. */
const plainText = (v: string) => v.isWellFormed() && ![...v].some((c) => c < ' ' || c === '\u007f');

/** Why `value` is not a theme (at most 20 CSS variables `--name: value`), or undefined. */
export function themeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object of CSS variables, e.g. {"--accent": "#0a7"}';
  const entries = Object.entries(value);
  if (entries.length > 20) return 'holds at most 20 variables';
  const bad = entries.find(([k, v]) => !CSS_VAR.test(k) || typeof v !== 'string' || !CSS_VALUE.test(v) || !plainText(v));
  return bad
    ? `has an invalid entry ${JSON.stringify(bad[0]).slice(0, 60)}: names are --lowercase-words, values 1-100 characters without ; { } < > \\, url( or control characters`
    : undefined;
}

function IsTheme() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isTheme',
      target: object.constructor,
      propertyName,
      validator: { validate: (v: unknown) => themeProblem(v) === undefined, defaultMessage: (a) => `${a?.property} ${themeProblem(a?.value)}` },
    });
}

/** `POST /v1/receivers/{name}/portal-sessions`. */
export class CreatePortalSessionDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 60, maximum: 604800, default: 3600, description: 'How long the session lasts, seconds (at most 7 days)' })
  @IsOptional()
  @Min(60)
  @Max(604800)
  @IsInt()
  ttlSeconds?: number;

  @ApiPropertyOptional({
    type: [String],
    enum: PORTAL_CAPABILITIES,
    default: ['read'],
    description:
      'read: deliveries, attempts, secrets, latency (always held); replay: send one delivery, all failed since a time, or a test; rotate: rotate its secret; edit: URL, headers, disable and enable',
  })
  @IsOptional()
  @IsIn(PORTAL_CAPABILITIES, { each: true })
  @ArrayMaxSize(4)
  @IsArray()
  capabilities?: PortalCapability[];

  @ApiPropertyOptional({ example: 'https://app.example.com/settings/webhooks', description: 'Where the portal\'s "back" link goes' })
  @IsOptional()
  @IsHttpUrl()
  returnUrl?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { '--accent': '#0a7', '--font': 'Inter, sans-serif' },
    description: 'CSS variables the portal page sets (its colours and fonts: --bg, --fg, --muted, --accent, --ok, --bad, --font)',
  })
  @IsOptional()
  @IsTheme()
  @Verbatim()
  theme?: Record<string, string>;
}

export class PortalSessionDto {
  @ApiProperty({ description: 'Open it (or put it in an iframe): the token is exchanged for a cookie and leaves the address bar' }) url: string;
  @ApiProperty({ description: 'cbp_…: signed by the service, for this receiver only; not an API key' }) token: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty({ type: [String], enum: PORTAL_CAPABILITIES }) capabilities: PortalCapability[];
}

export class RevokedPortalSessionsDto {
  @ApiProperty() receiver: string;
  @ApiProperty({ description: 'live sessions revoked' }) revoked: number;
}
