import { p } from '@mikro-orm/core';

/** Cyborg's TimestampMixin: every row has `created_at` and `updated_at`. */
export const timestamps = {
  createdAt: p.datetime().onCreate(() => new Date()),
  updatedAt: p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date()),
};
