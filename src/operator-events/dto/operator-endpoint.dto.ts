import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { IsHttpUrl } from '../../common/validators.js';
import { EXAMPLE_SECRET, SecretDto } from '../../signing/dto/secrets.dto.js';
import { TaskDto } from '../../tasks/dto/task.dto.js';
import { OPERATOR_EVENT_TYPES, type OperatorEventType } from '../../queue/operator-event.sql.js';

/** `PUT /v1/operator-endpoint`: the key's own endpoint for its operator events. Left out: stays as it was (a first PUT needs `url`). */
export class PutOperatorEndpointDto {
  @ApiPropertyOptional({ example: 'https://ops.example.com/webhooks', description: 'Where the operator events go (required on the first PUT)' })
  @IsOptional()
  @IsHttpUrl()
  url?: string;

  @ApiPropertyOptional({
    type: [String],
    enum: OPERATOR_EVENT_TYPES,
    nullable: true,
    description: 'The types it takes; null or left out on the first PUT: all of them. host.circuit_* reach admin keys only',
  })
  @IsOptional()
  @IsIn(OPERATOR_EVENT_TYPES, { each: true })
  @ArrayMaxSize(OPERATOR_EVENT_TYPES.length)
  @IsArray()
  eventTypes?: OperatorEventType[] | null;

  @ApiPropertyOptional({ description: 'true: its events are stored and held, not sent, until false' })
  @IsOptional()
  @IsBoolean()
  disabled?: boolean;

  @ApiPropertyOptional({
    example: EXAMPLE_SECRET,
    description: 'Bring its signing secret (whsec_ + base64 of at least 24 bytes); else one is made',
  })
  @IsOptional()
  @Matches(/^whsec_[A-Za-z0-9+/]+={0,2}$/, { message: 'secret must be whsec_ followed by base64' })
  @IsString()
  secret?: string;
}

export class OperatorEndpointDto {
  @ApiProperty() url: string;
  @ApiProperty({ type: [String], enum: OPERATOR_EVENT_TYPES, nullable: true, description: 'null: all types' }) eventTypes: OperatorEventType[] | null;
  @ApiProperty() disabled: boolean;
  @ApiProperty({ type: String, nullable: true }) disabledReason: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'its first failed delivery since its last success' }) failingSince: string | null;
  @ApiProperty({ type: [SecretDto], description: 'whsec_ secrets that sign its calls, newest first' }) secrets: SecretDto[];
  @ApiProperty({ type: TaskDto, nullable: true, description: 'a disable or enable still holding or releasing its events' }) task: TaskDto | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class DeletedOperatorEndpointDto {
  @ApiProperty() deleted: boolean;
  @ApiProperty({ description: 'its events not yet delivered, cancelled so far' }) cancelledCallbacks: number;
}
