// saccbook widgets
