// Lab SMTP servers: just enough of RFC 5321 and RFC 3207 to be probed (banner, EHLO, STARTTLS,
// QUIT), plus the broken and hostile kinds a posture check meets on the internet. They never
// accept mail (MAIL is answered 502), so nothing here could relay anything.
import net from 'node:net';
import tls from 'node:tls';

export type SmtpBehaviour =
  /**
   * STARTTLS with the given certificate. `afterStarttls`: plain text the server sends after its
   * 220 to STARTTLS, before its TLS (the response-injection shape of the CVE-2011-0411 class):
   * in the same write as the 220, or once the client's first TLS bytes arrived (so they reach a
   * client that has already handed the connection to TLS).
   */
  | {
      kind: 'starttls';
      cert: { keyPem: string; chainPem: string };
      tls?: tls.SecureContextOptions;
      afterStarttls?: { text: string; when: 'with_220' | 'after_client_hello' };
    }
  /** EHLO without STARTTLS. */
  | { kind: 'no_starttls' }
  /** Advertises STARTTLS and answers the command 454. */
  | { kind: 'refuse_starttls' }
  /** Accepts the connection and never sends a byte. */
  | { kind: 'silent' }
  /** A banner that never ends ("220-" continuation lines, as fast as the peer reads). */
  | { kind: 'endless_banner' };

/**
 * The argument of every EHLO/HELO the lab's SMTP servers received, oldest first (bounded to the
 * last 1,000): tests read what name the service announces itself with.
 */
export const labEhloArguments: string[] = [];

function recordEhlo(line: string): void {
  labEhloArguments.push(line.slice(line.indexOf(' ') + 1));
  if (labEhloArguments.length > 1000) labEhloArguments.shift();
}

export function createSmtpServer(name: string, behaviour: SmtpBehaviour): net.Server {
  return net.createServer((socket) => {
    socket.on('error', () => {});
    if (behaviour.kind === 'silent') return;
    if (behaviour.kind === 'endless_banner') {
      const line = Buffer.from(`220-${name} this banner goes on and on ${'.'.repeat(60)}\r\n`);
      let sent = 0;
      const pump = () => {
        // Bounded so a lab left running cannot fill memory: 64 MiB per connection at most.
        while (!socket.destroyed && sent < 64 * 1024 * 1024) {
          sent += line.length;
          if (!socket.write(line)) return void socket.once('drain', pump);
        }
      };
      pump();
      return;
    }
    speak(socket, name, behaviour);
  });
}

/**
 * Implicit TLS (port 465, RFC 8314 §3.3): the TLS handshake first, then the same dialogue as a
 * server without STARTTLS (it is already encrypted).
 */
export function createSmtpsServer(name: string, cert: { keyPem: string; chainPem: string }): tls.Server {
  return tls.createServer({ key: cert.keyPem, cert: cert.chainPem }, (socket) => {
    socket.on('error', () => {});
    speak(socket, name, { kind: 'no_starttls' });
  });
}

function speak(
  socket: net.Socket,
  name: string,
  behaviour: Exclude<SmtpBehaviour, { kind: 'silent' | 'endless_banner' }>,
): void {
  const offersTls = behaviour.kind !== 'no_starttls';
  let buf = '';
  const onData = (chunk: Buffer) => {
    buf += chunk.toString('latin1');
    if (buf.length > 4096) return void socket.destroy();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      const verb = line.split(' ')[0]!.toUpperCase();
      if (verb === 'EHLO' || verb === 'HELO') recordEhlo(line);
      if (verb === 'EHLO')
        socket.write(
          `250-${name} greets you\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n${offersTls ? '250-STARTTLS\r\n' : ''}250 8BITMIME\r\n`,
        );
      else if (verb === 'HELO') socket.write(`250 ${name}\r\n`);
      else if (verb === 'QUIT') {
        socket.end(`221 ${name} closing\r\n`);
        return;
      } else if (verb === 'STARTTLS' && behaviour.kind === 'starttls') {
        socket.off('data', onData);
        const ready = '220 2.0.0 ready to start TLS\r\n';
        const extra = behaviour.afterStarttls;
        if (!extra) socket.write(ready, () => upgrade(socket, name, behaviour));
        else if (extra.when === 'with_220') socket.write(ready + extra.text, () => upgrade(socket, name, behaviour));
        else {
          // Hold the client's first TLS bytes (the TLS socket reads them once made), then inject.
          socket.pause();
          socket.write(ready);
          socket.once('readable', () => socket.write(extra.text, () => upgrade(socket, name, behaviour)));
        }
        return;
      } else if (verb === 'STARTTLS') socket.write('454 4.7.0 TLS not available\r\n');
      else socket.write('502 5.5.1 not implemented\r\n');
    }
  };
  socket.on('data', onData);
  socket.write(`220 ${name} ESMTP lab\r\n`);
}

function upgrade(socket: net.Socket, name: string, behaviour: Extract<SmtpBehaviour, { kind: 'starttls' }>): void {
  const secure = new tls.TLSSocket(socket, {
    isServer: true,
    secureContext: tls.createSecureContext({
      key: behaviour.cert.keyPem,
      cert: behaviour.cert.chainPem,
      ...behaviour.tls,
    }),
  });
  secure.on('error', () => socket.destroy());
  let buf = '';
  secure.on('data', (chunk: Buffer) => {
    buf += chunk.toString('latin1');
    if (buf.length > 4096) return void secure.destroy();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const verb = buf.slice(0, nl).replace(/\r$/, '').split(' ')[0]!.toUpperCase();
      buf = buf.slice(nl + 1);
      if (verb === 'QUIT') return void secure.end(`221 ${name} closing\r\n`);
      if (verb === 'EHLO') secure.write(`250-${name}\r\n250 8BITMIME\r\n`);
      else secure.write('502 5.5.1 not implemented\r\n');
    }
  });
}
