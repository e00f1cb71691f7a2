import dns from 'node:dns/promises';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { checkUrlShape, refusalFor, RefusedDestination, resolveDestination } from '../../src/deliveries/network-guard.js';

// The network rules of every outbound call (deliveries and website analysis), on their own:
// which addresses, URLs and resolved hosts are refused before anything is sent.

describe('address checks', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.10.10',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    '2001:0:4136:e378:8000:63bf:f5ff:fffe',
  ])('refuses %s by default and allows it with the switch', (address) => {
    expect(refusalFor(address, false)).toMatch(/private, loopback, link-local or reserved/);
    expect(refusalFor(address, true)).toBeNull();
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])('allows the public address %s', (address) => {
    expect(refusalFor(address, false)).toBeNull();
  });

  it.each(['169.254.169.254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', 'fd00:ec2::254'])('always refuses the metadata address %s', (address) => {
    expect(refusalFor(address, true)).toMatch(/metadata/);
  });
});

describe('URL shape', () => {
  it.each([
    ['', /empty/],
    ['not a url', /not a valid URL/],
    ['ftp://example.com/', /http and https/],
    ['javascript:alert(1)', /http and https/],
    ['http://user:pw@example.com/', /Credentials/],
    ['https://user@example.com/', /Credentials/],
    ['http://metadata.google.internal/', /metadata/],
    ['http://METADATA.google.internal./x', /metadata/],
  ])('refuses %j', (url, message) => {
    expect(() => checkUrlShape(url)).toThrow(RefusedDestination);
    expect(() => checkUrlShape(url)).toThrow(message);
  });

  it('normalizes numeric IPv4 forms so they are checked as addresses', () => {
    expect(checkUrlShape('http://2852039166/').hostname).toBe('169.254.169.254');
    expect(checkUrlShape('http://0x7f.1/').hostname).toBe('127.0.0.1');
  });
});

describe('resolved hosts', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });
  /** DNS answers `addresses` for every host name. */
  const resolvesTo = (...addresses: string[]) =>
    jest.spyOn(dns, 'lookup').mockResolvedValue(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })) as never);

  it('refuses a host that resolves to a public and a private address, whichever comes first', async () => {
    for (const addresses of [
      ['93.184.216.34', '10.0.0.7'],
      ['10.0.0.7', '93.184.216.34'],
      ['2606:4700:4700::1111', '::1'],
    ]) {
      resolvesTo(...addresses);
      await expect(resolveDestination(new URL('https://mixed.example.test/hook'), false)).rejects.toThrow(
        /resolves to (10.0.0.7|::1), a private, loopback, link-local or reserved address/,
      );
    }
  });

  it('allows a host whose every address is public, and connects only to the addresses it checked', async () => {
    resolvesTo('93.184.216.34', '2606:4700:4700::1111');
    expect(await resolveDestination(new URL('https://public.example.test/hook'), false)).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
  });
});
