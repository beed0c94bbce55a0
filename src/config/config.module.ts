import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app.config.js';

/** Makes the validated AppConfig injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forConfig(config: AppConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: AppConfig, useValue: config }], exports: [AppConfig] };
  }
}
