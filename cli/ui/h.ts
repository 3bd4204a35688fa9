import React from 'react';

/** JSX without a build step: Node runs .ts directly but not .tsx. */
export const h = React.createElement;
