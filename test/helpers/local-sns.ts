import { randomBytes, randomUUID, sign } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import tls from 'node:tls';
import { selfSignedCertificate, type SelfSigned } from './self-signed.js';

/**
 * Amazon SNS, locally: a self-signed certificate for `sns.<region>.amazonaws.com`,
 * an HTTPS server on 127.0.0.1 that serves it as the signing certificate and
 * answers subscription confirmations, a signer that signs messages the way
 * SNS does (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA over
 * "Key\nvalue\n" of the signed keys in order), and an https.Agent that
 * routes connections for those AWS URLs to the local server and trusts only
 * the local certificate. The code under test keeps its real host rules.
 */

export const REGION = 'us-east-1';
export const SNS_HOST = `sns.${REGION}.amazonaws.com`;
export const TOPIC_ARN = `arn:aws:sns:${REGION}:123456789012:leasehold-ses-events`;

class RoutingAgent extends https.Agent {
  constructor(
    private readonly port: number,
    ca: string,
  ) {
    super({ ca, keepAlive: false });
  }

  override createConnection(options: https.RequestOptions): Socket {
    // Same TLS handshake and name check (servername stays the AWS host), other address.
    return tls.connect({ ...(options as tls.ConnectionOptions), host: '127.0.0.1', port: this.port, servername: SNS_HOST });
  }
}

export class LocalSns {
  readonly cert: SelfSigned = selfSignedCertificate(SNS_HOST);
  readonly certPath = `/SimpleNotificationService-${randomBytes(16).toString('hex')}.pem`;
  readonly requests: Array<{ path: string; query: URLSearchParams }> = [];
  agent!: https.Agent;
  private server: https.Server | undefined;

  get certUrl(): string {
    return `https://${SNS_HOST}${this.certPath}`;
  }

  async start(): Promise<void> {
    this.server = https.createServer({ key: this.cert.keyPem, cert: this.cert.certPem }, (req, res) => {
      const url = new URL(req.url ?? '/', `https://${SNS_HOST}`);
      this.requests.push({ path: url.pathname, query: url.searchParams });
      if (url.pathname === this.certPath) {
        res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(this.cert.certPem);
      } else if (url.pathname === '/' && url.searchParams.get('Action') === 'ConfirmSubscription') {
        res.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse><ConfirmSubscriptionResult><SubscriptionArn>arn:aws:sns:x</SubscriptionArn></ConfirmSubscriptionResult></ConfirmSubscriptionResponse>');
      } else {
        res.writeHead(404).end('not found');
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.agent = new RoutingAgent((this.server.address() as AddressInfo).port, this.cert.certPem);
  }

  async stop(): Promise<void> {
    this.agent?.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** A signed Notification carrying `message` (an SES event record). */
  notification(message: unknown, options: { version?: '1' | '2'; timestamp?: Date; topicArn?: string; subject?: string } = {}): Record<string, string> {
    return this.signed(
      {
        Type: 'Notification',
        MessageId: randomUUID(),
        TopicArn: options.topicArn ?? TOPIC_ARN,
        ...(options.subject ? { Subject: options.subject } : {}),
        Message: typeof message === 'string' ? message : JSON.stringify(message),
        Timestamp: (options.timestamp ?? new Date()).toISOString(),
        SignatureVersion: options.version ?? '1',
        SigningCertURL: this.certUrl,
        UnsubscribeURL: `https://${SNS_HOST}/?Action=Unsubscribe&SubscriptionArn=x`,
      },
      ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
    );
  }

  subscriptionConfirmation(options: { subscribeUrl?: string; topicArn?: string } = {}): Record<string, string> {
    const topicArn = options.topicArn ?? TOPIC_ARN;
    const token = randomBytes(32).toString('hex');
    return this.signed(
      {
        Type: 'SubscriptionConfirmation',
        MessageId: randomUUID(),
        Token: token,
        TopicArn: topicArn,
        Message: `You have chosen to subscribe to the topic ${topicArn}.`,
        SubscribeURL:
          options.subscribeUrl ?? `https://${SNS_HOST}/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(topicArn)}&Token=${token}`,
        Timestamp: new Date().toISOString(),
        SignatureVersion: '2',
        SigningCertURL: this.certUrl,
      },
      ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
    );
  }

  private signed(message: Record<string, string>, keys: string[]): Record<string, string> {
    const text = keys.filter((k) => k in message).map((k) => `${k}\n${message[k]}\n`).join('');
    const algorithm = message.SignatureVersion === '1' ? 'sha1' : 'sha256';
    return { ...message, Signature: sign(algorithm, Buffer.from(text, 'utf8'), this.cert.privateKey).toString('base64') };
  }
}
