"""Email: MIME with DKIM, the SMTP mailer (aiosmtplib) and the delivery channel."""
