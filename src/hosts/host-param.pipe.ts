import { Injectable, type PipeTransform } from '@nestjs/common';
import { destinationPathParam } from './host.policy.js';

/** The `:host` path parameter (a URL-encoded destination) as the destination it names; 400 otherwise. */
@Injectable()
export class HostParamPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    return destinationPathParam(value);
  }
}
