import type { PaddockClient } from '../api/index.ts';

/** What the picker needs of the API client; tests hand it a fake. */
export type PickerApi = Pick<PaddockClient, 'listSandboxes' | 'account' | 'createSandbox' | 'destroySandbox' | 'execStream' | 'listDir' | 'viewFile' | 'listPreviews' | 'createSnapshot' | 'listSnapshots'>;
