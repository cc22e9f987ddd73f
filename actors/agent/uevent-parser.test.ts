import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UeventParser } from './uevent-parser.js';

const recorded = (name: string): string => readFileSync(new URL(`../../test/fixtures/udevadm/${name}`, import.meta.url), 'utf8');
const PREAMBLE = 'monitor will print the received events for:\nKERNEL - the kernel uevent\n\n';

describe('udevadm monitor --kernel --property, as it prints kernel events', () => {
  it('reads each block: the action, devpath and subsystem, and the properties under them', () => {
    const p = new UeventParser();
    const events = p.push(PREAMBLE + recorded('v100-plug.events'));
    expect(events.map((e) => [e.action, e.subsystem, e.properties.PCI_SLOT_NAME, e.properties.DRIVER])).toEqual([
      ['add', 'pci', '0000:af:00.0', undefined],
      ['bind', 'pci', '0000:af:00.0', 'vfio-pci'],
    ]);
    expect(events[0]).toMatchObject({ devpath: '/devices/pci0000:ae/0000:ae:00.0/0000:af:00.0', properties: { PCI_ID: '10DE:1DB4', SEQNUM: '5113' } });
    expect(p.malformed).toBe(0);
  });

  it('gets the same events whatever the chunks the pipe cuts the text into', () => {
    const text = PREAMBLE + recorded('nf200-plug.events') + recorded('v100-unplug.events');
    const whole = new UeventParser().push(text);
    const p = new UeventParser();
    const bytewise = [...text].flatMap((c) => p.push(c));
    expect(bytewise).toEqual(whole);
    expect(whole.map((e) => `${e.action} ${e.properties.PCI_SLOT_NAME}`)).toEqual([
      'add 0000:b1:00.0',
      'bind 0000:b1:00.0',
      'add 0000:b2:00.0',
      'bind 0000:b2:00.0',
      'unbind 0000:af:00.0',
      'remove 0000:af:00.0',
    ]);
  });

  it('skips what is not an event, counting it, and reads the events after it', () => {
    const p = new UeventParser();
    const events = p.push(recorded('malformed.events') + recorded('vf-enable.events'));
    expect(events.map((e) => e.action)).toEqual(['add', 'bind']);
    // The header with a bad time, the message, the header with no devpath, the noise.
    expect(p.malformed).toBe(4);
  });

  it('keeps an event whose blank line never came when the stream ends, and one a header follows at once', () => {
    const p = new UeventParser();
    const [first, second] = recorded('v100-unplug.events').split('\n\n');
    expect(p.push(`${first}\n${second}`)).toHaveLength(1);
    expect(p.end().map((e) => e.action)).toEqual(['remove']);
  });

  it('drops an endless line without holding it in memory', () => {
    const p = new UeventParser();
    for (let i = 0; i < 100; i++) expect(p.push('x'.repeat(4096))).toEqual([]);
    expect(p.push(`\n${recorded('vf-enable.events')}`)).toHaveLength(2);
    expect(p.malformed).toBe(1);
  });
});
