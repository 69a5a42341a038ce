// REDIS_CLUSTER_NODES: the seed nodes of a Redis Cluster, a comma list. An entry is `host:port`, or
// a `redis://` / `rediss://` URL when the cluster needs credentials or TLS (managed clusters
// usually do); those then apply to every node, so all URL entries must agree on them. Seeds only
// bootstrap the client: it learns every master from CLUSTER SLOTS.

export interface ClusterNode {
  host: string;
  port: number;
}

export interface ClusterNodes {
  nodes: ClusterNode[];
  username?: string;
  password?: string;
  tls: boolean;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** null when the list is empty or an entry is not `host:port` / a redis(s) URL, or URLs disagree. */
export function parseClusterNodes(value: string): ClusterNodes | null {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  const nodes: ClusterNode[] = [];
  let auth: { username?: string; password?: string; tls: boolean } | undefined;
  for (const entry of entries) {
    if (/^rediss?:\/\//.test(entry)) {
      let url: URL;
      try {
        url = new URL(entry);
      } catch {
        return null;
      }
      const these = {
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
        tls: url.protocol === 'rediss:',
      };
      if (auth && JSON.stringify(auth) !== JSON.stringify(these)) return null;
      auth = these;
      const node = hostPort(`${url.hostname}:${url.port || '6379'}`);
      if (!node) return null;
      nodes.push(node);
    } else {
      const node = hostPort(entry);
      if (!node) return null;
      nodes.push(node);
    }
  }
  return { nodes, tls: false, ...auth };
}

function hostPort(s: string): ClusterNode | null {
  const m = HOST_PORT.exec(s);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}
