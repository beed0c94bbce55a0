import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { BatchesModule } from '../batches/batches.module.js';
import { CallbacksModule } from '../callbacks/callbacks.module.js';
import { DispatchModule } from '../dispatch/dispatch.module.js';
import { HistoryModule } from '../history/history.module.js';
import { ReceiversModule } from '../receivers/receivers.module.js';
import { RecoveriesModule } from '../recoveries/recoveries.module.js';
import { SigningModule } from '../signing/signing.module.js';
import { PortalApiController } from './portal-api.controller.js';
import { PortalAuthService } from './portal-auth.service.js';
import { PortalPagesController } from './portal-pages.controller.js';
import { PortalSessionController } from './portal-session.controller.js';
import { PortalSessionRepository } from './portal-session.repository.js';
import { PortalSessionService } from './portal-session.service.js';
import { PortalGuard } from './portal.guard.js';
import { PortalDeliveryService } from './portal-delivery.service.js';
import { PortalReceiverService } from './portal-receiver.service.js';

/** The receiver portal: sessions minted by the sender, and the pages and API a receiver uses with one. */
@Module({
  imports: [AuthModule, BatchesModule, CallbacksModule, DispatchModule, HistoryModule, ReceiversModule, RecoveriesModule, SigningModule],
  controllers: [PortalSessionController, PortalApiController, PortalPagesController],
  providers: [PortalSessionRepository, PortalSessionService, PortalAuthService, PortalReceiverService, PortalDeliveryService, PortalGuard],
})
export class PortalModule {}
