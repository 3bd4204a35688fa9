export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
