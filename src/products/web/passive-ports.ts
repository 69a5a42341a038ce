// The ports a passive web lookup may touch are the outbound guard's passive ports
// (src/net/passive-ports.ts: 80, 443, 8080, 8443). Without `authorized: true` the input URL must
// use one of them (admission answers 403 active_authorization_required otherwise), and the guard
// holds every redirect hop to them too (a page on 443 cannot send the lookup to port 22).
export { PASSIVE_PORTS as PASSIVE_WEB_PORTS, isPassivePort, urlPort } from '../../net/passive-ports.ts';
