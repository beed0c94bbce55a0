import { Module } from '@nestjs/common';
import { TransformRepository } from './transform.repository.js';
import { TransformSandbox } from './transform.sandbox.js';
import { TransformService } from './transform.service.js';

/** Transformations: receivers' own code that reshapes what they are sent, run in a sandbox (see transform.sandbox.ts). */
@Module({
  providers: [TransformSandbox, TransformRepository, TransformService],
  exports: [TransformService, TransformRepository],
})
export class TransformsModule {}
