// This server's offset from the database's clock, as the rate limits measure
// it (SPEC §14: windows are measured on one clock every instance shares). Each
// exchange reads the database's clock between sending and answering; the
// reading of the exchange with the shortest round trip of the last few is the
// most exact (it is off by at most half that round trip), so its offset wins.

/** The exchanges whose clock readings are kept */
const SAMPLES = 16;
/** An offset past this is told once: the machine's clock wants fixing, though the limits do not depend on it */
const SKEW_WARNING_MS = 1_000;

export class ClockOffset {
  /** the database's clock minus this machine's (ms) */
  offsetMs = 0;
  private readonly samples: { offset: number; roundTrip: number }[] = [];
  private told = false;
  private readonly onSkew: (offsetMs: number) => void;

  /** `onSkew`: called once when the offset passes a second (and again after it came back) */
  constructor(onSkew: (offsetMs: number) => void) {
    this.onSkew = onSkew;
  }

  /** Keeps the database's `clock` read by an exchange sent at `sentAt` and answered at `answeredAt` (this machine's ms) */
  read(clock: number | undefined, sentAt: number, answeredAt: number): void {
    if (clock === undefined || !Number.isFinite(clock)) return;
    this.samples.push({ offset: clock - (sentAt + answeredAt) / 2, roundTrip: answeredAt - sentAt });
    if (this.samples.length > SAMPLES) this.samples.shift();
    let best = this.samples[0]!;
    for (const sample of this.samples) if (sample.roundTrip < best.roundTrip) best = sample;
    this.offsetMs = best.offset;
    const skewed = Math.abs(this.offsetMs) > SKEW_WARNING_MS;
    if (skewed && !this.told) this.onSkew(this.offsetMs);
    this.told = skewed;
  }
}
