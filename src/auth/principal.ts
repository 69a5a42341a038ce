// Who is calling: the verified key, its application and its workspace, as admission needs them.
import type { RateOverrides } from '../ratelimit/policies.ts';
import type { ApprovedScope } from './approved-scopes.ts';

export const SCOPES = ['scan:create', 'scan:read', 'finding:read'] as const;
export type Scope = (typeof SCOPES)[number];

export interface Principal {
  keyId: number;
  applicationId: number;
  applicationPublicId: string;
  workspaceId: number;
  scopes: ReadonlySet<Scope>;
  monthlyCreditLimit: number | null;
  activeCapability: boolean;
  responsibleUseVersion: string | null;
  /** The workspace's approved target scopes, each with its proof (verified: the token to find). */
  approvedScopes: readonly ApprovedScope[];
  rateOverrides: RateOverrides;
}
