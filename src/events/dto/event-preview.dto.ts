import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, ArrayMaxSize, IsArray, IsOptional, IsString, MaxLength } from 'class-validator';
import { Verbatim } from '../../common/verbatim.js';
import { PREVIEW_REASONS } from '../event-preview.policy.js';

/** `POST /v1/events/preview`: an event as it would be published; nothing is stored or sent. */
export class PreviewEventDto {
  @ApiProperty({ example: 'order.paid' }) @MaxLength(128) @IsString() type: string;

  @ApiProperty({ nullable: true, description: 'Any JSON value, checked as a publish checks it', example: { orderId: 'o-42', amount: 1500 } })
  @Allow()
  @Verbatim()
  payload: unknown;

  @ApiPropertyOptional({
    type: [String],
    description:
      'Only these receivers, each with why it would or would not get the event (an unknown name is a 400); without it, every receiver subscribed to the type',
  })
  @IsOptional()
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  @IsArray()
  receivers?: string[];
}

export class PreviewReceiverDto {
  @ApiProperty({ example: 'merchant-42' }) receiver: string;
  @ApiProperty({ description: 'It would get a delivery (held, when it is disabled)' }) delivers: boolean;
  @ApiProperty({ enum: PREVIEW_REASONS, description: 'Why it would or would not' }) reason: string;
  @ApiProperty({ example: 'subscribed through order.*' }) detail: string;
}

export class EventPreviewDto {
  @ApiProperty() type: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Why no receiver would get it: an unknown type, or a payload its schema refuses (the 400 a publish would answer); null when it would be accepted',
  })
  problem: string | null;
  @ApiProperty({ description: 'Deliveries a publish would make now' }) deliveries: number;
  @ApiProperty({ type: [PreviewReceiverDto] }) receivers: PreviewReceiverDto[];
}
