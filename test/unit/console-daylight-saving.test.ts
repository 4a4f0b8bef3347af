// The console's notes on daylight-saving changes among a job's next fire times.
import { describe, expect, it } from 'vitest';
import { daylightSavingNotes } from '../../console/src/daylight-saving';

describe('daylight-saving notes of the console', () => {
  it('names the change and the moved fire time of a fixed-time schedule across a spring-forward gap', () => {
    // 30 2 * * * in New York: 2026-03-08 02:30 does not exist and fires at 03:00 EDT.
    const fireTimes = [
      '2026-03-06T07:30:00.000Z',
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
      '2026-03-10T06:30:00.000Z',
    ];
    const notes = daylightSavingNotes(fireTimes, 'America/New_York');
    expect(notes[0]).toBeNull();
    expect(notes[1]).toBeNull();
    expect(notes[2]).toContain('GMT-05:00 → GMT-04:00');
    expect(notes[2]).toContain('Moved by a daylight-saving change: 03:00 instead of 02:30 wall time.');
    expect(notes[3]).toBeNull();
    expect(notes[4]).toBeNull();
  });

  it('notes the change, and nothing moved, for an hourly schedule across a fall-back', () => {
    // 0 * * * * in London on 2026-10-25: 01:00 BST, 01:00 GMT, 02:00 GMT.
    const fireTimes = ['2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z'];
    const notes = daylightSavingNotes(fireTimes, 'Europe/London');
    expect(notes.map((note) => note !== null)).toEqual([false, false, true, false]);
    expect(notes[2]).toContain('GMT+01:00 → GMT');
    expect(notes.join(' ')).not.toContain('Moved');
  });

  it('says nothing where the offset stays', () => {
    expect(daylightSavingNotes(['2026-11-24T08:00:00.000Z', '2026-11-25T08:00:00.000Z', '2026-11-26T08:00:00.000Z'], 'Europe/Paris')).toEqual([
      null,
      null,
      null,
    ]);
  });
});
