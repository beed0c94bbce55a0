import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AUTH_TYPES, CLIENT_AUTH_METHODS } from '../credential.policy.js';

/**
 * `auth` and `tls` of a receiver: the shapes a PUT takes (write-only secrets) and the
 * ones every answer shows (`"set"` where a secret is). The PUT's values are checked by
 * credential.policy.ts, which names the field that is wrong, never its value.
 */

export class BasicAuthDto {
  @ApiProperty({ enum: ['basic'] }) type: 'basic';
  @ApiProperty({ description: 'No ":"' }) username: string;
  @ApiPropertyOptional({ description: 'Write-only; left out on an update of the same type: kept' }) password?: string;
}

export class BearerAuthDto {
  @ApiProperty({ enum: ['bearer'] }) type: 'bearer';
  @ApiPropertyOptional({ description: 'Sent as Authorization: Bearer <token>. Write-only; left out on an update of the same type: kept' }) token?: string;
}

export class OAuth2AuthDto {
  @ApiProperty({ enum: ['oauth2'] }) type: 'oauth2';
  @ApiProperty({
    example: 'https://auth.example.com/oauth/token',
    description: 'The token endpoint (client credentials grant); http:// wherever a callback URL may be',
  })
  tokenUrl: string;
  @ApiProperty() clientId: string;
  @ApiPropertyOptional({ description: 'Write-only; left out on an update of the same type: kept' }) clientSecret?: string;
  @ApiPropertyOptional({ type: String, nullable: true, example: 'webhooks:write' }) scope?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Sent as the audience parameter (Auth0 and others ask for it)' }) audience?: string | null;
  @ApiPropertyOptional({
    enum: CLIENT_AUTH_METHODS,
    default: 'basic',
    description: 'How the client authenticates at the token endpoint: HTTP Basic, or client_id and client_secret in the form',
  })
  clientAuth?: 'basic' | 'post';
}

export class ReceiverTlsInputDto {
  @ApiPropertyOptional({ type: String, nullable: true, description: 'PEM; with clientKey: sent when the receiver asks for a client certificate (mutual TLS)' })
  clientCertificate?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'PEM, unencrypted; write-only (left out: kept)' }) clientKey?: string | null;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description: "PEM, one or more certificates: the receiver's server certificate must chain to one of them (instead of the system's CAs)",
  })
  ca?: string | null;
}

/** `auth` as answers show it: its type and shown fields; "set" for the secret. */
export class ReceiverAuthDto {
  @ApiProperty({ enum: AUTH_TYPES }) type: string;
  @ApiPropertyOptional({ description: 'basic' }) username?: string;
  @ApiPropertyOptional({ enum: ['set'], description: 'basic' }) password?: 'set';
  @ApiPropertyOptional({ enum: ['set'], description: 'bearer' }) token?: 'set';
  @ApiPropertyOptional({ description: 'oauth2' }) tokenUrl?: string;
  @ApiPropertyOptional({ description: 'oauth2' }) clientId?: string;
  @ApiPropertyOptional({ enum: ['set'], description: 'oauth2' }) clientSecret?: 'set';
  @ApiPropertyOptional({ type: String, nullable: true, description: 'oauth2' }) scope?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'oauth2' }) audience?: string | null;
  @ApiPropertyOptional({ enum: CLIENT_AUTH_METHODS, description: 'oauth2' }) clientAuth?: string;
}

export class CertificateDto {
  @ApiProperty({ example: 'CN=merchant-42' }) subject: string;
  @ApiProperty() issuer: string;
  @ApiProperty({ format: 'date-time' }) notAfter: string;
  @ApiProperty({ description: 'SHA-256 of the certificate (DER), colon-separated hex' }) fingerprint256: string;
}

/** `tls` as answers show it: the certificates, "set" for the key. */
export class ReceiverTlsDto {
  @ApiProperty({ type: CertificateDto, nullable: true }) clientCertificate: CertificateDto | null;
  @ApiProperty({ type: String, enum: ['set'], nullable: true }) clientKey: 'set' | null;
  @ApiProperty({ type: [CertificateDto], nullable: true }) ca: CertificateDto[] | null;
}
