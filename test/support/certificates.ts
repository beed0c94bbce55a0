import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface CertificateFiles {
  /** PEM files on disk (for NODE_EXTRA_CA_CERTS and the like) and their contents. */
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

/**
 * Certificates made for one test with the openssl CLI, in a temporary folder that
 * `remove()` deletes: self-signed ones, and a CA that signs server and client
 * certificates (mutual TLS).
 */
export class TestCertificates {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'test-certs-'));

  /** A self-signed certificate for `subjectAltName` (e.g. `DNS:localhost,IP:127.0.0.1`), valid for a day. */
  selfSigned(name: string, subjectAltName: string): CertificateFiles {
    const files = this.paths(name);
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=${subjectAltName}`,
      '-keyout',
      files.keyFile,
      '-out',
      files.certFile,
    ]);
    return this.read(files);
  }

  /** A CA (self-signed, allowed to sign certificates), valid for a day. */
  authority(name: string): CertificateFiles {
    const files = this.paths(name);
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-keyout',
      files.keyFile,
      '-out',
      files.certFile,
    ]);
    return this.read(files);
  }

  /** A certificate signed by `ca`: for a server (`subjectAltName` set) or a client (`clientAuth`). */
  signed(ca: CertificateFiles, name: string, use: { subjectAltName: string } | { clientAuth: true }): CertificateFiles {
    const files = this.paths(name);
    const request = path.join(this.dir, `${name}.csr`);
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', files.keyFile, '-out', request]);
    const extensions = path.join(this.dir, `${name}.ext`);
    const ext = 'subjectAltName' in use ? `subjectAltName=${use.subjectAltName}\nextendedKeyUsage=serverAuth\n` : 'extendedKeyUsage=clientAuth\n';
    execFileSync('sh', ['-c', `printf '%s' "$1" > "$2"`, 'sh', ext, extensions]);
    openssl([
      'x509',
      '-req',
      '-in',
      request,
      '-CA',
      ca.certFile,
      '-CAkey',
      ca.keyFile,
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      extensions,
      '-out',
      files.certFile,
    ]);
    return this.read(files);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private paths(name: string) {
    return { certFile: path.join(this.dir, `${name}.pem`), keyFile: path.join(this.dir, `${name}.key`) };
  }

  private read(files: { certFile: string; keyFile: string }): CertificateFiles {
    return { ...files, cert: readFileSync(files.certFile, 'utf8'), key: readFileSync(files.keyFile, 'utf8') };
  }
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'ignore' });
}
