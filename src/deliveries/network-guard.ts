import dns from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Every outbound URL is typed by a customer, so each one is checked before any byte leaves:
// the URL's shape here, then every address its host resolves to. The request then connects
// to the addresses that were checked (see pinnedLookup), so a second DNS answer cannot
// swap in an internal address (DNS rebinding).

/** A destination the network rules refuse: never called, never retried. */
export class RefusedDestination extends Error {
  override name = 'RefusedDestination';
}

/** DNS could not answer right now: worth retrying like a connection failure. */
export class TransientResolutionError extends Error {
  override name = 'TransientResolutionError';
}

const METADATA_HOST_NAMES = new Set(['metadata.google.internal']);
// AWS/GCP/Azure IPv4 metadata and the AWS IPv6 one.
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254'].map((address) => ipaddr.parse(address).toNormalizedString());

function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/** Checks what can be checked without DNS; returns the parsed URL. */
export function checkUrlShape(raw: string): URL {
  const trimmed = raw.trim();
  if (trimmed === '') throw new RefusedDestination('The URL is empty.');
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new RefusedDestination(`"${trimmed.slice(0, 200)}" is not a valid URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RefusedDestination(`Only http and https URLs are allowed, not ${url.protocol.replace(/:$/, '')}.`);
  if (url.username !== '' || url.password !== '') throw new RefusedDestination('Credentials embedded in the URL are not allowed; configure authentication instead.');
  if (METADATA_HOST_NAMES.has(hostOf(url))) throw new RefusedDestination('Cloud metadata hosts are always refused.');
  return url;
}

/** The IPv4 address carried inside an IPv6 one (mapped, translated, NAT64, 6to4, Teredo). */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  const v4 = (offset: number) => new ipaddr.IPv4(bytes.slice(offset, offset + 4));
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return v4(12);
    case '6to4':
      return v4(2);
    case 'teredo':
      return new ipaddr.IPv4(bytes.slice(12, 16).map((byte) => byte ^ 0xff));
    default:
      return null;
  }
}

function isMetadataAddress(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const candidates = [address];
  if (address.kind() === 'ipv6') {
    const inner = embeddedIPv4(address as ipaddr.IPv6);
    if (inner) candidates.push(inner);
  }
  return candidates.some((candidate) => METADATA_ADDRESSES.includes(candidate.toNormalizedString()));
}

/** Public unicast only: private, loopback, link-local, CGNAT, multicast, reserved and the rest are refused. */
function isPublicAddress(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() === 'ipv4') return address.range() === 'unicast';
  const inner = embeddedIPv4(address as ipaddr.IPv6);
  if (inner) return inner.range() === 'unicast';
  return address.range() === 'unicast';
}

/** Refuses the address unless the rules allow it; returns the reason or null. */
export function refusalFor(rawAddress: string, allowPrivateNetworks: boolean): string | null {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(rawAddress.replace(/%.*$/, ''));
  } catch {
    return `"${rawAddress}" is not an IP address.`;
  }
  if (isMetadataAddress(address)) return 'Cloud metadata hosts are always refused.';
  if (!allowPrivateNetworks && !isPublicAddress(address)) return `The host resolves to ${rawAddress}, a private, loopback, link-local or reserved address.`;
  return null;
}

/**
 * Resolves the URL's host and checks every address. An unresolvable host is refused (never
 * called); a temporary DNS failure is retryable.
 */
export async function resolveDestination(url: URL, allowPrivateNetworks: boolean): Promise<LookupAddress[]> {
  const host = hostOf(url);
  let addresses: LookupAddress[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await dns.lookup(host, { all: true, verbatim: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAI_AGAIN') throw new TransientResolutionError(`DNS lookup for ${host} failed temporarily.`);
      throw new RefusedDestination(`The host ${host} could not be resolved.`);
    }
  }
  if (addresses.length === 0) throw new RefusedDestination(`The host ${host} could not be resolved.`);
  for (const { address } of addresses) {
    const refusal = refusalFor(address, allowPrivateNetworks);
    if (refusal) throw new RefusedDestination(refusal);
  }
  return addresses;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for the socket that answers with the already checked addresses only. */
export function pinnedLookup(addresses: LookupAddress[]) {
  return (_hostname: string, options: unknown, callback?: LookupCallback): void => {
    const done = (typeof options === 'function' ? options : callback) as LookupCallback;
    const wanted = typeof options === 'object' && options !== null ? (options as { all?: boolean; family?: number }) : {};
    const family = typeof options === 'number' ? options : wanted.family;
    const matching = family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
    const usable = matching.length > 0 ? matching : addresses;
    if (wanted.all) done(null, usable);
    else done(null, usable[0]!.address, usable[0]!.family);
  };
}
