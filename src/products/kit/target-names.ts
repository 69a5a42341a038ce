// Step 5 of admission, after the schema: the names an input asks about must not be special-use
// (src/net/special-use.ts). A refused name is a 400 invalid_request whose details say which rule
// refused it (`reason`) and which suffix (`suffix`), before anything is reserved or resolved.
import type { Config } from '../../config/config.ts';
import { ApiError } from '../../contract/errors.ts';
import { isIP } from 'node:net';
import { specialUseOf, specialUsePolicy, specialUseText } from '../../net/special-use.ts';

export function refuseSpecialUseNames(
  names: ReadonlyArray<{ path: string; name: string }>,
  config: Pick<Config, 'ALLOW_SPECIAL_USE_DOMAINS' | 'ALLOW_PRIVATE_TARGETS'>,
): void {
  const policy = specialUsePolicy(config);
  for (const { path, name } of names) {
    if (isIP(name)) continue; // addresses are the outbound guard's business
    const refused = specialUseOf(name, policy);
    if (!refused) continue;
    const text = specialUseText(refused);
    throw new ApiError('invalid_request', {
      message: `The request names ${name}: ${text}.`,
      details: { reason: refused.reason, suffix: refused.suffix, issues: [{ path, message: text }] },
    });
  }
}
